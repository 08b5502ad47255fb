import sys

from benchmarks.tpch.scoreboard import main

sys.exit(main())

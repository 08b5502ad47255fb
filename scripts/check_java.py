"""Fail early, with a clear message, when Java 17+ (needed by Spark 4) is missing."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

MESSAGE = (
    "lipspark runs on Apache Spark 4, which needs Java 17 or newer.\n"
    "{found}\n"
    "Install a JDK 17+ (Debian/Ubuntu: apt-get install openjdk-17-jre-headless) "
    "and make sure `java` is on PATH or JAVA_HOME points at it."
)


def main() -> int:
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not os.path.exists(java):
        print(MESSAGE.format(found="No `java` executable was found."), file=sys.stderr)
        return 1
    out = subprocess.run([java, "-version"], capture_output=True, text=True)
    text = out.stderr + out.stdout
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        print(MESSAGE.format(found=f"Could not read the Java version from: {text.strip()!r}"), file=sys.stderr)
        return 1
    major = int(m.group(1))
    if major == 1 and m.group(2):
        major = int(m.group(2))
    if major < 17:
        print(MESSAGE.format(found=f"Found Java {major} at {java}."), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

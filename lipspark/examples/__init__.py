"""Small runnable examples from the Lipstick paper."""

#!/usr/bin/env python3
"""Summarizes benchmark output: every line "RESULT NAME VALUE UNIT" of the
files given (or of stdin) becomes one row per NAME and UNIT, in order of
first appearance, with the number of values, their median, minimum and
maximum, as a Markdown table. Other lines are ignored.

  summarize.py FILE...
"""
import fileinput
import statistics


def main():
    rows = {}
    for line in fileinput.input():
        f = line.split()
        if len(f) < 4 or f[0] != "RESULT":
            continue
        try:
            value = float(f[2])
        except ValueError:
            continue  # a run that failed to produce its figure
        rows.setdefault((f[1], f[3]), []).append(value)
    print("| figure | unit | n | median | min | max |")
    print("|---|---|---|---|---|---|")
    for (name, unit), v in rows.items():
        print("| %s | %s | %d | %.1f | %.1f | %.1f |"
              % (name, unit, len(v), statistics.median(v), min(v), max(v)))


if __name__ == "__main__":
    main()

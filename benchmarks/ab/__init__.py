"""Before/after harnesses: this checkout against another (``--before DIR``), interleaved
round by round, or configurations of this one against each other. Apart from the suite
(``python -m benchmarks.run``), which measures this checkout alone."""

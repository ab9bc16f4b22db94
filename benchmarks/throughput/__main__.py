"""`python -m benchmarks.throughput`: the command in benchmarks.throughput.cli."""

from benchmarks.throughput.cli import main

if __name__ == "__main__":
    main()

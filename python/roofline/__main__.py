"""python -m roofline ARGS...: the roofline command line, in this process."""
import sys

from ._roofline import main as _main


def main() -> int:
    return _main(["roofline", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())

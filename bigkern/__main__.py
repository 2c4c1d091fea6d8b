"""``python -m bigkern``: the ``bigkern`` command."""

from bigkern.cli.main import console_main

if __name__ == "__main__":  # pragma: no cover - run as a module
    console_main()

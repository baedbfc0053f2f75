"""``python -m transformer_lib train | translate | evaluate``: see :mod:`.pipeline.cli`."""

import sys

from .pipeline.cli import main

if __name__ == "__main__":
    try:
        code = main()
    finally:
        # Under torchrun: leave the process group before the interpreter shuts down (a
        # group is only ever joined once torch is loaded).
        if "torch" in sys.modules:
            from .pipeline.distributed import finish_distributed

            finish_distributed()
    sys.exit(code)

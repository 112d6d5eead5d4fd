import sys

from adr_review.cli import main

sys.exit(main())

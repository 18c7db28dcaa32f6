#!/usr/bin/env python3
"""A server that exits at once, with code 1 and a message on stderr, for the
test that `c10k run --server` fails such a cell with the server's words.

usage: exits_at_once.py PORT    (PORT is ignored)
"""

import sys

sys.exit("cannot start: no such thing")

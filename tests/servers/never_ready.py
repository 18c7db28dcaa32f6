#!/usr/bin/env python3
"""A server that never becomes ready: it neither prints READY nor listens,
for the test that `c10k run --server` fails such a cell with its cause.

usage: never_ready.py PORT    (PORT is ignored)

Sleeps 600 s; dies of SIGTERM's default action.
"""

import time

time.sleep(600)

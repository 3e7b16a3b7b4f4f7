"""Start smg's router with the flags of a JSON file (a list of strings).

The flags carry the workers' API key, so they stay in a file only root and the router's group
read, never on a command line that every local user sees.
"""

import json
import sys

from smg.launch_router import launch_router, parse_router_args

with open(sys.argv[1], encoding="utf-8") as args_file:
    args = json.load(args_file)
launch_router(parse_router_args(args))

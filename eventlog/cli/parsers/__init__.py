"""Each command's parser, declared apart from the command's module.

`eventlog.cli.app` builds the parser of the command named on the line from its module
here, so ``eventlog CMD --help`` (and a usage error) imports neither the command's module
nor what it runs (the log, the stores, rich, the report's renderer): a module here imports
argparse, `eventlog.cli.context` and `eventlog.cli.options` alone (tests/test_startup.py
holds each command's ``--help`` to the start-up budget). A handler is named
``"MODULE:FUNCTION"`` (`eventlog.cli.context.lazy_handler`).
"""

"""The CLI's subcommands, one module each; jepsen_py.cli lists them."""

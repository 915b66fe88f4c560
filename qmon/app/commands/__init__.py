"""The ``qmon`` subcommands, a module for each concern; ``qmon.app.cli`` parses the command line and calls them."""

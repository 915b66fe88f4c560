"""The application: the command line, the demo, the workload simulator and the terminal view."""

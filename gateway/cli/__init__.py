"""The mns-gateway command line: one module per command group, the options they share (common), the
remote admin client."""

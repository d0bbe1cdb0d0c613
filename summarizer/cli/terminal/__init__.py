"""What the command line shows on a terminal: colour, progress, did-you-mean, grouped help."""

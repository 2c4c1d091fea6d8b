"""bigkern's test suite: a folder per package of bigkern/, and folders for what spans it."""

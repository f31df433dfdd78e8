"""Display metadata (spec 03 §D): what a command appears to do, for humans only."""

"""The bounded parser processes that every document parser runs in."""

"""Text to vectors: the backends, the protocol they meet, the cache on disk."""

"""The broker listener's request handlers, one module per API family."""

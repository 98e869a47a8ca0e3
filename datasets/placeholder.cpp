// Replaced by the dataset readers.

"""PySpark integration: batch reads over topic-partition offset ranges (later issue)."""

"""The Twisted broker: connections, request handlers, partitions and replica management (broker issue)."""

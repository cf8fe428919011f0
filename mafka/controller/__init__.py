"""The controller: /controller election, partition and replica state machines (broker issue)."""

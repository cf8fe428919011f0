"""Command-line tools: `mafka` and Kafka-named subcommands."""

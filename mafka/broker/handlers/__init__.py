"""One module per API family; each exports ``handlers(broker) -> {api_key: handler}``."""

"""The Kafka wire protocol server: kio-based codec, one module per API, asyncio server."""

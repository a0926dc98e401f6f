"""The Nextcloud side: the HTTP client, its health and the webhooks', the accounts."""

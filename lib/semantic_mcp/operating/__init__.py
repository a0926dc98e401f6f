"""What an admin uses to run the app: the audit record of tool calls in Nextcloud's log."""

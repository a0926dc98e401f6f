"""The types and settings every room stands on: documents, filters, principal, clock, config, language, logging safety, storage modes."""

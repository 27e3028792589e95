"""Shared pytest configuration: integration tests live under tests/integration (marker `cluster`)."""

"""Approvals: the operator route (board, waiting call, desk, views) and the parked call's stored form."""

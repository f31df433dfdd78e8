"""Approvals as one concept: their vocabulary, what is on offer, the route, the operator's
view, the board and the waiting call, and the parked call's stored form."""

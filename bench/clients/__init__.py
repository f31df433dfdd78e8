"""Minimal clients for each contender, all timing the same thing: request sent → event seen."""

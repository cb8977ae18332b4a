"""Trained ranker models shipped with codenav (``codenav.learned``)."""

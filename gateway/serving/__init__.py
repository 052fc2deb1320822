"""Serving: the gunicorn application, the worker classes, the WSGI entry, the probes and the
HTTP/1.1 front (http1)."""

"""HTTP/1.1 in front of the application: where requests begin and end, what a connection may
hold, and how a request refused before the application sees it is answered.

* :mod:`~gateway.serving.http1.framing` reads requests off a byte stream (pure, llhttp underneath)
  and
  refuses every ambiguous or malformed framing; bodies arrive whole and within the body limit.
* :mod:`~gateway.serving.http1.environ` turns a framed request into a WSGI environ with a sized
  body.
* :mod:`~gateway.serving.http1.connections` bounds the connections of a worker process and decides
  which to give up when it is full (pure).
* :mod:`~gateway.serving.http1.refusal` answers a refused request with the application's own MNS
  error.

The IO shells are the gunicorn worker classes, :mod:`gateway.serving.pywsgi_worker` (the default)
and :mod:`gateway.serving.gthread_worker`. docs/http.md says what is refused and why.
"""

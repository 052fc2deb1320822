# syntax=docker/dockerfile:1
# mns-gateway: `docker build -t mns-gateway .` then
#   docker run -p 8080:8080 -v mns-data:/data mns-gateway
# The image runs as an unprivileged user, keeps everything it writes under /data (the SQLite
# database, generated access and signing keys) and works with a read-only root file system
# given a writable /tmp (gunicorn's worker heartbeat files).

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/mns-gateway
WORKDIR /src
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY receiver ./receiver
# The base install, as the README's run command does it: no extras (the PostgreSQL drivers and
# everything gunicorn's gevent worker needs are base dependencies).
RUN /opt/mns-gateway/bin/pip install .

FROM python:3.11-slim
ENV PATH=/opt/mns-gateway/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MNS_GATEWAY_DATA_DIR=/data
RUN groupadd --system --gid 10001 mns \
    && useradd --system --uid 10001 --gid mns --home-dir /data --no-create-home \
       --shell /usr/sbin/nologin mns \
    && install --directory --owner=mns --group=mns --mode=0750 /data
COPY --from=build /opt/mns-gateway /opt/mns-gateway
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4)"]
ENTRYPOINT ["mns-gateway"]
CMD ["serve", "--host", "0.0.0.0"]

# Images for docker-compose.yml: `broker` (the bundled broker alone) and `jupyter`
# (JupyterLab with PySpark and this package, for the notebooks).
FROM python:3.11-slim-bookworm AS broker
WORKDIR /src
COPY . .
# The broker needs amqp_protocol and its management listener's libraries, not Spark.
RUN pip install --no-cache-dir --no-deps . && pip install --no-cache-dir aiohttp prometheus_client
EXPOSE 5672 15672
CMD ["amqp-broker", "--host", "0.0.0.0", "--port", "5672"]

FROM python:3.11-slim-bookworm AS jupyter
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN pip install --no-cache-dir . jupyterlab ipykernel
WORKDIR /home/notebooks
EXPOSE 8888
CMD ["jupyter", "lab", "--ip=0.0.0.0", "--port=8888", "--no-browser", "--allow-root"]

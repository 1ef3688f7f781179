# Production image for deploy/ (built by your CI; Docker is not available on the development machines).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY console ./console
COPY packing ./packing
COPY templates ./templates
COPY static ./static
COPY manage.py ./
RUN pip install --no-cache-dir . gunicorn \
    && useradd --uid 10001 --no-create-home loadmaster
USER 10001
EXPOSE 8000
CMD ["gunicorn", "console.wsgi:application", "--bind", "0.0.0.0:8000"]

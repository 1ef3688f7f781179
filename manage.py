#!/usr/bin/env python
"""Django's command-line entry point for the Loadmaster console."""
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A settings mistake is the operator's to fix: say what, not where in Django it surfaced.
        print(f"configuration error: {exc}", file=sys.stderr)
        sys.exit(2)

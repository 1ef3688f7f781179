"""The price override rules now live as NodeOverlays (console/overlays migration 0002 moved every row)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0001_initial"),
        ("overlays", "0002_s7_h19overlay_price_overrides"),
    ]

    operations = [migrations.DeleteModel(name="PriceOverrideRule")]

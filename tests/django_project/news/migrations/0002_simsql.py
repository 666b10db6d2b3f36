from django.db import migrations

from simsql.django.operations import AddSimHash, InstallSimSQL


class Migration(migrations.Migration):
    dependencies = [("news", "0001_initial")]
    operations = [
        InstallSimSQL(),
        AddSimHash("article", source=["title", "body"]),
    ]

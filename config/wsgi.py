import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from config.startup import freeze_loaded_objects  # noqa: E402

freeze_loaded_objects(templates=True)

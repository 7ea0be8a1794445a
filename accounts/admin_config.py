"""The admin app with our site (accounts.admin_site), which records every change made through it.

Kept apart from accounts.admin_site because INSTALLED_APPS imports this before any model exists.
"""

from django.contrib.admin.apps import AdminConfig


class AuditedAdminConfig(AdminConfig):
    default_site = "accounts.admin_site.AuditedAdminSite"

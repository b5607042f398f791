"""Multi-row reads shared by the API and the dashboard: one filter, one search, one active list, one cursor.

Both sides read through here so a filter means the same on a page and over REST (NetBox reuses one FilterSet for
its REST and UI views); writes stay in tarsy.services.
"""

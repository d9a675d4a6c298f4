"""Chat-platform adapters: Feishu/Lark and Slack groups and DMs as Staffroom rooms and DMs.

``base.py`` holds the adapter interface and the bridge to the gateway (in: platform
messages posted exactly once; out: employees' replies sent as each employee), ``mapping.py``
which group, thread or person maps to which session, ``slack.py`` and ``feishu.py`` the
platforms, and ``http.py`` their webhooks on the server and the ``adapters:`` config.
"""

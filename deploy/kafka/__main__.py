"""``python -m deploy.kafka``: resolve the pinned Kafka (``deploy.kafka.resolve``) and print
the directory of its jars."""

import sys

from deploy.kafka.resolve import main

sys.exit(main())

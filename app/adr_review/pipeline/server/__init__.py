"""The App's side: webhook intake, the queue and its worker, catch-up of missed deliveries, locks."""

"""Team memory: what each machine indexed, shipped to a PostgreSQL database a team shares."""

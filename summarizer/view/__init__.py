"""The session page: a timeline of a session with a lane per agent, as one HTML file."""

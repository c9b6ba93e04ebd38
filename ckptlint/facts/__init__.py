"""What is known about torch and other libraries' checkpoint APIs, as data."""
